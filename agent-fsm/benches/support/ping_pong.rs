//! The two-state machine both executor benchmarks drive (this crate's
//! `executor.rs` and the peer comparison in `benches/peers/`), the bare
//! tokio actor they both measure against, and the helpers they share:
//! timing rounds inside one `block_on` (one driver or one per agent), and reading the resident set size
//! for the memory-per-agent figures. Included with `#[path]` by each bench,
//! so both measure the very same code.

use std::hint::black_box;
use std::time::Instant;

use agent_fsm::{Description, Kind, Kinded, Named, Observer, StateInfo, StateMachine, Step, Transition};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot};

/// The two states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum State {
    /// The initial state.
    Ping,
    /// The state after an odd number of ticks.
    Pong,
}

/// The only event; its payload is added to the running total.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tick(pub(crate) u64);

/// The only action, returned on every tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    /// Counted one tick.
    Count,
}

/// Fieldless already, the states and the action are their own kinds; the
/// event's kind is [`TickKind`].
impl Kind for State {
    const ALL: &'static [Self] = &[Self::Ping, Self::Pong];

    fn name(self) -> &'static str {
        Named::name(&self)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl Kinded for State {
    type Kind = Self;

    fn kind(&self) -> Self {
        *self
    }
}

impl Kind for Action {
    const ALL: &'static [Self] = &[Self::Count];

    fn name(self) -> &'static str {
        "Count"
    }

    fn index(self) -> usize {
        0
    }
}

impl Kinded for Action {
    type Kind = Self;

    fn kind(&self) -> Self {
        *self
    }
}

/// The kind of [`Tick`], the only event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TickKind;

impl Kind for TickKind {
    const ALL: &'static [Self] = &[Self];

    fn name(self) -> &'static str {
        "Tick"
    }

    fn index(self) -> usize {
        0
    }
}

impl Kinded for Tick {
    type Kind = TickKind;

    fn kind(&self) -> TickKind {
        TickKind
    }
}

impl Named for State {
    fn name(&self) -> &'static str {
        match self {
            Self::Ping => "Ping",
            Self::Pong => "Pong",
        }
    }
}

impl Named for Tick {
    fn name(&self) -> &'static str {
        "Tick"
    }
}

impl Named for Action {
    fn name(&self) -> &'static str {
        "Count"
    }
}

/// The table of `PingPong`, written out by hand so that the machine is the
/// same code for every variant that runs a `StateMachine`.
static DESCRIPTION: Description = Description {
    name: "PingPong",
    states: &[
        StateInfo { name: "Ping", initial: true, terminal: false, transient: false },
        StateInfo { name: "Pong", initial: false, terminal: false, transient: false },
    ],
    events: &["Tick"],
    actions: &["Count"],
    transitions: &[
        Transition {
            from: "Ping",
            event: Some("Tick"),
            guard: None,
            pattern: None,
            to: "Pong",
            action: Some("Count"),
            in_place: false,
            any_state: false,
        },
        Transition {
            from: "Pong",
            event: Some("Tick"),
            guard: None,
            pattern: None,
            to: "Ping",
            action: Some("Count"),
            in_place: false,
            any_state: false,
        },
    ],
    ignored: &[],
    fallback: "Count",
    mermaid: "stateDiagram-v2\n",
};

/// Ping/Pong with a running total of the ticks, hand-written so that the
/// per-event work is a toggle and an add and nothing else.
#[derive(Debug, Default)]
pub(crate) struct PingPong {
    /// `None` until the first tick, read as `Ping`.
    state: Option<State>,
    /// Sum of every tick handled.
    total: u64,
}

impl StateMachine for PingPong {
    type State = State;
    type Event = Tick;
    type Action = Action;
    type Context = u64;

    const DESCRIPTION: &'static Description = &DESCRIPTION;

    fn handle_event(&mut self, event: Tick) -> Action {
        self.handle_event_with(event, &mut ())
    }

    fn handle_event_with<O: Observer<Self> + ?Sized>(&mut self, event: Tick, observer: &mut O) -> Action {
        let from = *self.state();
        let (to, row) = match from {
            State::Ping => (State::Pong, 0),
            State::Pong => (State::Ping, 1),
        };
        self.total = self.total.wrapping_add(event.0);
        self.state = Some(to);
        observer.on_transition(&Step { from, event: Some(TickKind), to, action: Some(Action::Count), row });
        Action::Count
    }

    fn state(&self) -> &State {
        self.state.as_ref().unwrap_or(&State::Ping)
    }

    fn from_parts(state: State, total: u64) -> Self {
        Self { state: Some(state), total }
    }

    fn is_poisoned(&self) -> bool {
        false
    }

    fn context(&self) -> &u64 {
        &self.total
    }

    fn context_mut(&mut self) -> &mut u64 {
        &mut self.total
    }
}

/// The machine's total and state name, read back to check a variant.
pub(crate) type Snapshot = (u64, &'static str);

impl PingPong {
    /// What the checks compare.
    pub(crate) fn snapshot(&self) -> Snapshot {
        (self.total, self.state().name())
    }
}

// ===== the baseline: a bare mpsc actor =====

/// A message to the bare actor.
pub(crate) enum Msg {
    /// One-way event.
    Event(Tick),
    /// Event whose action name is sent back.
    Call(Tick, oneshot::Sender<&'static str>),
    /// Answered once every earlier message is handled.
    Flush(oneshot::Sender<()>),
    /// Reads the machine back; only the peer comparison's checks send it.
    #[allow(dead_code)]
    Inspect(oneshot::Sender<Snapshot>),
}

/// A handle to a bare actor, the usual shape: a bounded `mpsc` channel of
/// the executor's default inbox capacity (32), `while let Some(msg) =
/// rx.recv().await` in the actor, `handle_event` with no observer, a
/// oneshot per reply. With `TRY_FIRST`, sends take the same fast path as
/// the executor's handle (`try_send`, then `send(..).await` only when the
/// channel is full); without it, every send is `send(..).await`.
#[derive(Clone)]
pub(crate) struct Bare<const TRY_FIRST: bool = false>(mpsc::Sender<Msg>);

/// Starts a bare actor.
pub(crate) fn bare_spawn<const TRY_FIRST: bool>() -> Bare<TRY_FIRST> {
    let (tx, mut rx) = mpsc::channel(32);
    tokio::spawn(async move {
        let mut machine = PingPong::default();
        while let Some(msg) = rx.recv().await {
            match msg {
                Msg::Event(event) => {
                    black_box(machine.handle_event(event));
                }
                Msg::Call(event, reply) => {
                    let action = machine.handle_event(event);
                    let _ = reply.send(action.name());
                }
                Msg::Flush(reply) => {
                    let _ = reply.send(());
                }
                Msg::Inspect(reply) => {
                    let _ = reply.send(machine.snapshot());
                }
            }
        }
    });
    Bare(tx)
}

impl<const TRY_FIRST: bool> Bare<TRY_FIRST> {
    /// Sends one message, waiting for room in the inbox.
    async fn send(&self, msg: Msg) {
        let msg = if TRY_FIRST {
            match self.0.try_send(msg) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(msg)) => msg,
                Err(mpsc::error::TrySendError::Closed(_)) => panic!("the actor stopped"),
            }
        } else {
            msg
        };
        self.0.send(msg).await.unwrap();
    }

    /// Sends `msg_for(reply)` and waits for the reply.
    async fn request<R>(&self, msg_for: impl FnOnce(oneshot::Sender<R>) -> Msg) -> R {
        let (tx, rx) = oneshot::channel();
        self.send(msg_for(tx)).await;
        rx.await.unwrap()
    }

    /// Sends `n` events one way, then waits until all are handled.
    pub(crate) async fn fire(&self, n: u64) {
        for i in 0..n {
            self.send(Msg::Event(Tick(i))).await;
        }
        self.request(Msg::Flush).await;
    }

    /// `n` round trips, each waiting for its reply; returns the last reply.
    pub(crate) async fn calls(&self, n: u64) -> &'static str {
        let mut last = "";
        for i in 0..n {
            last = black_box(self.request(|reply| Msg::Call(Tick(i), reply)).await);
        }
        last
    }

    /// The machine's total and state; only the peer comparison's checks
    /// read it.
    #[allow(dead_code)]
    pub(crate) async fn inspect(&self) -> Snapshot {
        self.request(Msg::Inspect).await
    }
}

/// Times `iters` rounds of `round` on `rt`, all inside one `block_on`.
pub(crate) fn time_rounds<F: Future<Output = ()>>(
    b: &mut criterion::Bencher<'_>,
    rt: &Runtime,
    mut round: impl FnMut() -> F,
) {
    b.iter_custom(|iters| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                round().await;
            }
            start.elapsed()
        })
    });
}

/// [`time_rounds`] for the throughput benches: in each round every agent
/// gets a driver task of its own, running `drive` on its own clone of the
/// agent, and the round ends when all of them have finished.
pub(crate) fn time_concurrent_rounds<A, F, Fut>(b: &mut criterion::Bencher<'_>, rt: &Runtime, agents: &[A], drive: F)
where
    A: Clone,
    F: Fn(A) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    time_rounds(b, rt, || async {
        let drivers: Vec<_> = agents.iter().map(|agent| tokio::spawn(drive(agent.clone()))).collect();
        for driver in drivers {
            driver.await.unwrap();
        }
    });
}

/// Resident set size in bytes, from `/proc/self/statm` (pages of 4 KiB).
pub(crate) fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// On a current-thread runtime, `yield_now` reschedules the caller after
/// every task already ready, so each spawned agent runs until it parks on
/// its empty inbox; a few rounds cover runtimes whose start takes more than
/// one poll. No event is sent, so nothing transient is allocated.
pub(crate) async fn let_every_task_run() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}
