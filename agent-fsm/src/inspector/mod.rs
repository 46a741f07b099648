//! A live inspector for running agents: a small web server on localhost
//! whose page shows each attached agent's machine as a diagram with the
//! current state highlighted and the path taken so far, a timeline of its
//! hops with the time spent in each state, the text of the current model
//! call as it streams (its last 64 KiB), the tools in flight with their
//! elapsed time (the first [`TOOLS_SHOWN`], and how many more), a pending
//! approval (its summary's first [`SUMMARY_SHOWN`] bytes, with a link to
//! the whole text if it is longer) with approve and deny buttons (which
//! take clicks once the approval has been shown for a moment, so that a
//! click meant for the approval it replaced cannot answer it), and the
//! whole history, filterable (its last [`HOPS_KEPT`] hops). Clicking a
//! state shows its rows and the time spent in it.
//!
//! ```no_run
//! # #[agent_fsm::state_machine(fallback = Nothing)]
//! # mod door {
//! #     #[states] #[derive(Debug, Clone)] pub enum State { #[initial] Closed, Open }
//! #     #[events] #[derive(Debug, Clone)] pub enum Event { Push }
//! #     #[actions] #[derive(Debug)] pub enum Action { Nothing }
//! #     transitions! { Closed + Push => Open / Nothing, Open + Push => Closed / Nothing }
//! # }
//! use agent_fsm::inspector::{AgentView, Inspector};
//! use agent_fsm::runtime::{ExecutorConfig, from_fn, spawn};
//! use door::Machine;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let handle = spawn(Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
//! let inspector = Inspector::bind("127.0.0.1:0").await?; // port 0: any free one
//! let id = inspector.attach(&handle, AgentView::new("door")).await?;
//! println!("inspector: {}", inspector.agent_url(id));
//! # Ok(()) }
//! ```
//!
//! [`AgentView`] names the agent and, optionally, says how to read its
//! outputs (text deltas, tools started and finished: [`Shown`]) and how to
//! recognise a pending approval in its state and which events answer it
//! ([`Approval`]). Any number of agents (a fleet's) can be attached to one
//! inspector; its index page lists those running and the last
//! [`FINISHED_KEPT`] that finished.
//!
//! # What it costs
//! Nothing for an agent that is not attached, or whose inspector has
//! stopped: the executor has no hook for the inspector. An attached
//! agent has one live subscription
//! ([`MachineHandle::subscribe`]), so its worker builds a notification
//! per hop and output (and, with approvals, copies its state once per
//! step, as [`subscribe_with_states`](MachineHandle::subscribe_with_states)
//! says); the inspector's own task turns each into JSON for the open
//! pages. The figures are in the performance notes (`docs/performance.md`,
//! "Inspector").
//!
//! Each open page is sent its updates as they come; those it has not read
//! yet (its connection's buffers full: a page that stopped reading) are
//! held for it up to [`PAGE_BACKLOG`] bytes (4 MiB) or a thousand
//! updates, whichever comes first. Past them they are dropped, and the
//! page is sent a fresh snapshot when it reads again.
//!
//! A page follows its agent only while it is shown: a browser opens six
//! connections at most to one host, and each page's update stream holds
//! one, so pages left open in other tabs would otherwise take them all
//! (a seventh would not load, and no approve button would be heard). A
//! page shown again follows the agent from a fresh snapshot.
//!
//! # No network, loopback only, and a token
//! Every script and style the page loads is served by the binary
//! (Mermaid's single-file build among them, compressed), so the page
//! renders with no network at all. The server binds only loopback
//! addresses, and answers only those who know its token: a random one
//! per inspector, 128 bits, part of the URLs [`url`](Inspector::url) and
//! [`agent_url`](Inspector::agent_url) give (`?token=..`). Opening one
//! of them sets a cookie for that inspector's port, which the page's
//! later requests carry; a client other than a browser sends the token
//! as that cookie ([`cookie`](Inspector::cookie)) or in the query. So
//! another user of the machine, who can reach its port but not read the
//! URL it was given to, can neither read the agents nor answer their
//! approvals. It answers only requests addressed to its own address (not
//! a DNS name another site could point at 127.0.0.1), and the buttons'
//! requests carry a header a page of another origin cannot send; nor
//! can such a page show the inspector's in a frame of its own (a page on
//! another port of this host is sent the cookie) and steer a click onto
//! its approve button. The
//! scripts, styles and icon are served to anyone: they are the same in
//! every build. At most [`MAX_CONNECTIONS`] connections are open at once
//! (a page holds one or two); one beyond them waits to be accepted until
//! another closes, so a process that opens connections and sends nothing
//! cannot use up the file descriptors of the process that runs the
//! agents. Nor can it keep those places: a connection the inspector has
//! sent nothing for [`IDLE_LIMIT`] (30 s), while none of its requests is
//! being answered, is closed; an open page's update stream sends a
//! keep-alive every 15 s, and a click waiting for a busy agent is a
//! request being answered, so neither is closed. A connection whose
//! request came without the token (or for another address) is closed as
//! soon as it is answered, so a client that cannot read the agents cannot
//! keep a place by asking again within each limit. A process that keeps
//! opening connections can still slow the others down: each waits its
//! turn in the kernel's queue.

mod control;
mod feed;
mod listener;
mod log;
mod server;
mod view;
mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::StateMachine;
use crate::runtime::MachineHandle;
use log::Agent;

pub use feed::PAGE_BACKLOG;
pub use log::{HOPS_KEPT, SUMMARY_SHOWN, TOOLS_SHOWN};
pub use view::{AgentView, Approval, Shown};

/// Why the inspector could not start or attach an agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectorError {
    /// The address could not be bound.
    #[error("cannot listen on the inspector's address: {0}")]
    Bind(#[source] std::io::Error),
    /// The address is not a loopback one.
    #[error("the inspector listens on loopback addresses only, not {0}")]
    NotLoopback(SocketAddr),
    /// The agent's worker failed: there is nothing to follow.
    #[error("the agent's worker failed")]
    Failed,
}

/// How many finished agents an inspector keeps showing: once more have
/// finished, those attached first are forgotten when the next agent is
/// attached (their pages answer 404, as for an id never given), so that
/// an inspector a fleet attaches an agent to per job does not keep every
/// agent's hops and text for as long as it runs. Agents still running
/// are all kept.
pub const FINISHED_KEPT: usize = 1000;

/// The most connections an inspector holds open at once.
pub const MAX_CONNECTIONS: usize = 128;

/// How long a connection may go without the inspector sending its client
/// anything, while no request of it is being answered, before the
/// inspector closes it: one that never sends a request or sends it too
/// slowly, one left open after its answer (a browser opens another), one
/// whose client stopped reading. An open page's update stream sends a
/// keep-alive at half this interval, so it stays open however quiet its
/// agent.
pub const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// How long a stopping server waits for the requests it is answering
/// before it cuts the connections still open.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What the server and the agents' tasks share.
pub(crate) struct Shared {
    /// Times on the page are milliseconds from here.
    epoch: Instant,
    /// By id; `None` for a finished agent forgotten ([`FINISHED_KEPT`]).
    agents: Mutex<Vec<Option<Arc<Agent>>>>,
    /// `Host` values the server answers: `127.0.0.1:PORT` and
    /// `localhost:PORT`.
    host: String,
    localhost: String,
    /// The access token (hex), and the name of the cookie that carries it.
    token: String,
    cookie: String,
    stop: CancellationToken,
}

impl Shared {
    /// Adds the agent `make` builds with its id, the next index, under the
    /// list's lock: agents attached at the same time get distinct ids.
    /// Forgets the finished agents attached first beyond the last
    /// [`FINISHED_KEPT`]: an inspector that a fleet attaches an agent to
    /// per job would otherwise keep every log for as long as it runs.
    fn add(&self, make: impl FnOnce(usize) -> Arc<Agent>) -> Arc<Agent> {
        let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
        let agent = make(agents.len());
        agents.push(Some(Arc::clone(&agent)));
        let finished: Vec<usize> = agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.as_ref().is_some_and(|a| a.finished()))
            .map(|(id, _)| id)
            .collect();
        for id in finished.iter().take(finished.len().saturating_sub(FINISHED_KEPT)) {
            agents[*id] = None;
        }
        agent
    }

    fn agents(&self) -> Vec<Arc<Agent>> {
        self.agents.lock().unwrap_or_else(PoisonError::into_inner).iter().flatten().cloned().collect()
    }

    fn agent(&self, id: usize) -> Option<Arc<Agent>> {
        self.agents.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned().flatten()
    }
}

/// The inspector's server: bound by [`bind`](Self::bind), serving until it
/// is dropped or [`shutdown`](Self::shutdown). Agents are attached with
/// [`attach`](Self::attach), and stay listed after they finish (the last
/// [`FINISHED_KEPT`] of them).
pub struct Inspector {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Inspector {
    /// Starts the server on `addr`, a loopback address (`127.0.0.1:0`
    /// takes any free port; [`url`](Self::url) says which), on the
    /// current tokio runtime, which needs its `time` driver (a stopping
    /// server waits for its clients a bounded time).
    ///
    /// # Errors
    /// [`InspectorError::NotLoopback`] for another address,
    /// [`InspectorError::Bind`] if it cannot be bound.
    pub async fn bind(addr: impl tokio::net::ToSocketAddrs) -> Result<Self, InspectorError> {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(InspectorError::Bind)?;
        let addr = listener.local_addr().map_err(InspectorError::Bind)?;
        if !addr.ip().is_loopback() {
            return Err(InspectorError::NotLoopback(addr));
        }
        let token = crate::random::token().map_err(|e| InspectorError::Bind(std::io::Error::other(e.to_string())))?;
        let stop = CancellationToken::new();
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            agents: Mutex::new(Vec::new()),
            host: addr.to_string(),
            localhost: format!("localhost:{}", addr.port()),
            token,
            // Cookies are kept per host, not per port: each inspector's
            // has a name of its own.
            cookie: format!("agent-fsm-inspector-{}", addr.port()),
            stop: stop.clone(),
        });
        let app = server::router(Arc::clone(&shared));
        let cut = CancellationToken::new();
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let listener = listener::Cuttable { listener, cut: cut.clone(), open };
        let server = tokio::spawn(async move {
            // Each request is given its connection's count of requests
            // being answered, which the connection's idle limit reads.
            let app = app.into_make_service_with_connect_info::<listener::Answering>();
            let served = axum::serve(listener, app).with_graceful_shutdown(stop.clone().cancelled_owned());
            let mut served = std::pin::pin!(served.into_future());
            let result = tokio::select! {
                result = &mut served => result,
                () = async {
                    stop.cancelled().await;
                    tokio::time::sleep(SHUTDOWN_GRACE).await;
                } => {
                    // A graceful shutdown waits for every connection; one
                    // whose client stopped reading, or never ends its
                    // request, would keep the server (and its task) forever.
                    cut.cancel();
                    served.await
                }
            };
            if let Err(error) = result {
                tracing::warn!(%error, "the inspector's server stopped");
            }
        });
        tracing::info!(%addr, "inspector listening");
        Ok(Self { shared, addr, server })
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The index page's URL, with the inspector's token
    /// (`http://127.0.0.1:PORT/?token=..`): whoever has it can read the
    /// agents and answer their approvals.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.shared.token)
    }

    /// The page of the agent attached as `id`, with the inspector's token.
    #[must_use]
    pub fn agent_url(&self, id: usize) -> String {
        format!("http://{}/agents/{id}?token={}", self.addr, self.shared.token)
    }

    /// The `Cookie` header's value that carries the inspector's token
    /// (`agent-fsm-inspector-PORT=..`), for a client other than the page.
    #[must_use]
    pub fn cookie(&self) -> String {
        format!("{}={}", self.shared.cookie, self.shared.token)
    }

    /// Attaches the agent behind `handle`, shown as `view` says, and
    /// returns its id (its page is [`agent_url`](Self::agent_url)). The
    /// page shows the hops its [`History`](crate::runtime::History) still
    /// holds, and everything after; an agent that has stopped is shown
    /// with the history it stopped with, finished (with a note saying why,
    /// if its worker failed while attached). Requires a tokio
    /// runtime with the `time` driver (the page's times are tokio
    /// instants).
    ///
    /// # Errors
    /// [`InspectorError::Failed`] if the agent's worker failed.
    pub async fn attach<M, O>(
        &self,
        handle: &MachineHandle<M, O>,
        view: AgentView<M, O>,
    ) -> Result<usize, InspectorError>
    where
        M: StateMachine + Send + 'static,
        M::State: Clone + Send + Sync + 'static,
        M::Event: Clone + Send + Sync + 'static,
        O: Clone + Send + Sync + 'static,
    {
        watch::attach(&self.shared, handle, view).await
    }

    /// Stops serving: open pages' update streams end, and the server
    /// finishes the requests it is answering, for up to two seconds; the
    /// connections still open then (a client that stopped reading, or
    /// never finished its request) are cut. The attached agents, which
    /// go on running, are no longer followed: their subscriptions end,
    /// and they cost nothing more. Dropping the inspector does the same
    /// without waiting.
    pub async fn shutdown(mut self) {
        self.shared.stop.cancel();
        let _ = (&mut self.server).await;
    }
}

impl Drop for Inspector {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector").field("addr", &self.addr).finish_non_exhaustive()
    }
}
