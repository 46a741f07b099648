//! The two-state machine both executor benchmarks drive (this crate's
//! `executor.rs` and the peer comparison in `benches/peers/`), and the
//! helpers they share: timing rounds inside one `block_on`, and reading
//! the resident set size for the memory-per-agent figures. Included with
//! `#[path]` by each bench, so both measure the very same code.

use std::time::Instant;

use agent_fsm::{Description, Named, Observer, StateInfo, StateMachine, Step, Transition};
use tokio::runtime::Runtime;

/// The two states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy)]
pub(crate) enum Action {
    /// Counted one tick.
    Count,
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
            to: "Pong",
            action: Some("Count"),
            in_place: false,
            any_state: false,
        },
        Transition {
            from: "Pong",
            event: Some("Tick"),
            guard: None,
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

    fn handle_event_with<O: Observer + ?Sized>(&mut self, event: Tick, observer: &mut O) -> Action {
        let from = *self.state();
        let (to, row) = match from {
            State::Ping => (State::Pong, 0),
            State::Pong => (State::Ping, 1),
        };
        self.total = self.total.wrapping_add(event.0);
        self.state = Some(to);
        observer.on_transition(&Step {
            from: from.name(),
            event: Some("Tick"),
            to: to.name(),
            action: Some("Count"),
            row,
        });
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
