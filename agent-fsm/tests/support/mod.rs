//! Test support shared by the executor tests: a small Loom-like agent
//! machine written by hand to the `StateMachine` contract, and scripted
//! effects (an LLM that streams deltas with small delays, tools that sleep,
//! panic or hang) that count every event they produce, so tests can check
//! that the machine received exactly what was produced.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::time::Duration;

use agent_fsm::runtime::ExecutorConfig;
use agent_fsm::{
    Description, Kind, Kinded, Named, Observer, StateInfo, StateMachine, Status, Step, Transition, Unhandled,
    UnhandledReason,
};
use tokio_util::task::TaskTracker;

pub(crate) mod run;
mod scripted;

// As the module: each test file uses a different part.
#[allow(unused_imports)]
pub(crate) use scripted::{End, Produced, Reply, Scripted};

/// Awaits `future` for at most five minutes of the runtime's clock (a
/// paused clock jumps there as soon as the runtime is idle; the tests'
/// own timers are shorter), so that a worker that never gets there fails
/// the test instead of stalling the suite.
pub(crate) async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(300), future).await.expect("timed out: the worker never got there")
}

// ===== the machine =====

/// The agent's states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    Waiting,
    CallingLlm {
        retries: u32,
        text: String,
    },
    /// Transient: resolved inside the step that entered it.
    ProcessingLlmResponse {
        text: String,
        tool_calls: Vec<String>,
    },
    ExecutingTools {
        pending: Vec<String>,
        results: Vec<(String, bool)>,
    },
    Error {
        retries: u32,
    },
    Done,
}

/// The agent's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    UserInput(String),
    Delta(String),
    Completed { tool_calls: Vec<String> },
    LlmError,
    ToolDone { id: String, ok: bool },
    RetryFired,
    Interrupted,
    Shutdown,
}

/// The agent's actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    SendLlmRequest { attempt: u32 },
    ExecuteTools(Vec<String>),
    ScheduleRetry { retry: u32 },
    Display(String),
    DisplayError,
    WaitForInput,
    Shutdown,
}

/// Data outside the states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Context {
    pub(crate) max_attempts: u32,
    /// User inputs, in the order the machine received them.
    pub(crate) inputs: Vec<String>,
    /// Assistant texts: complete ones, and partial ones cut by an interrupt
    /// (suffixed with " [interrupted]").
    pub(crate) transcript: Vec<String>,
    /// One entry per finished tool batch: (id, ok) in arrival order.
    pub(crate) tool_batches: Vec<Vec<(String, bool)>>,
}

/// The hand-written agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agent {
    state: State,
    context: Context,
}

impl Agent {
    pub(crate) fn new(max_attempts: u32) -> Self {
        Self { state: State::Waiting, context: Context { max_attempts, ..Context::default() } }
    }
}

impl Named for State {
    fn name(&self) -> &'static str {
        match self {
            Self::Waiting => "Waiting",
            Self::CallingLlm { .. } => "CallingLlm",
            Self::ProcessingLlmResponse { .. } => "ProcessingLlmResponse",
            Self::ExecutingTools { .. } => "ExecutingTools",
            Self::Error { .. } => "Error",
            Self::Done => "Done",
        }
    }
}

impl Named for Event {
    fn name(&self) -> &'static str {
        match self {
            Self::UserInput(_) => "UserInput",
            Self::Delta(_) => "Delta",
            Self::Completed { .. } => "Completed",
            Self::LlmError => "LlmError",
            Self::ToolDone { .. } => "ToolDone",
            Self::RetryFired => "RetryFired",
            Self::Interrupted => "Interrupted",
            Self::Shutdown => "Shutdown",
        }
    }
}

impl Named for Action {
    fn name(&self) -> &'static str {
        match self {
            Self::SendLlmRequest { .. } => "SendLlmRequest",
            Self::ExecuteTools(_) => "ExecuteTools",
            Self::ScheduleRetry { .. } => "ScheduleRetry",
            Self::Display(_) => "Display",
            Self::DisplayError => "DisplayError",
            Self::WaitForInput => "WaitForInput",
            Self::Shutdown => "Shutdown",
        }
    }
}

/// A kind enum for a hand-written enum: the variants' names, with the
/// `Kind` impl and the `Kinded` impl that maps a value through its name.
macro_rules! kinds {
    ($kind:ident for $ty:ident: $($v:ident),+) => {
        #[doc = concat!("The kinds of [`", stringify!($ty), "`].")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum $kind { $($v),+ }

        impl agent_fsm::Kind for $kind {
            const ALL: &'static [Self] = &[$(Self::$v),+];

            fn name(self) -> &'static str {
                match self { $(Self::$v => stringify!($v)),+ }
            }

            fn index(self) -> usize {
                self as usize
            }
        }

        impl agent_fsm::Kinded for $ty {
            type Kind = $kind;

            fn kind(&self) -> $kind {
                let name = Named::name(self);
                let all = <$kind as agent_fsm::Kind>::ALL;
                *all.iter().find(|k| agent_fsm::Kind::name(**k) == name).expect("every variant has a kind")
            }
        }
    };
}

kinds!(StateKind for State: Waiting, CallingLlm, ProcessingLlmResponse, ExecutingTools, Error, Done);
kinds!(EventKind for Event: UserInput, Delta, Completed, LlmError, ToolDone, RetryFired, Interrupted, Shutdown);
kinds!(ActionKind for Action: SendLlmRequest, ExecuteTools, ScheduleRetry, Display, DisplayError, WaitForInput, Shutdown);

const fn state(name: &'static str, initial: bool, terminal: bool, transient: bool) -> StateInfo {
    StateInfo { name, initial, terminal, transient }
}

const fn row(
    from: &'static str,
    event: Option<&'static str>,
    guard: Option<&'static str>,
    to: &'static str,
    action: Option<&'static str>,
    in_place: bool,
    any_state: bool,
) -> Transition {
    Transition { from, event, guard, pattern: None, to, action, in_place, any_state }
}

const ROW_INPUT: usize = 0;
const ROW_DELTA: usize = 1;
const ROW_COMPLETED: usize = 2;
const ROW_HAS_TOOLS: usize = 3;
const ROW_NO_TOOLS: usize = 4;
const ROW_RETRY: usize = 5;
const ROW_GIVE_UP: usize = 6;
const ROW_RETRY_FIRED: usize = 7;
const ROW_TOOL_PENDING: usize = 8;
const ROW_TOOLS_DONE: usize = 9;
const ROW_INTERRUPT_LLM: usize = 10;
const ROW_INTERRUPT_TOOLS: usize = 11;
const ROW_INTERRUPT_ERROR: usize = 12;
/// `* + Shutdown => Done`, expanded per state in `STATES` order.
const ROW_SHUTDOWN: usize = 13;

static DESCRIPTION: Description = Description {
    name: "Agent",
    states: &[
        state("Waiting", true, false, false),
        state("CallingLlm", false, false, false),
        state("ProcessingLlmResponse", false, false, true),
        state("ExecutingTools", false, false, false),
        state("Error", false, false, false),
        state("Done", false, true, false),
    ],
    events: &["UserInput", "Delta", "Completed", "LlmError", "ToolDone", "RetryFired", "Interrupted", "Shutdown"],
    actions: &[
        "SendLlmRequest",
        "ExecuteTools",
        "ScheduleRetry",
        "Display",
        "DisplayError",
        "WaitForInput",
        "Shutdown",
    ],
    transitions: &[
        row("Waiting", Some("UserInput"), None, "CallingLlm", Some("SendLlmRequest"), false, false),
        row("CallingLlm", Some("Delta"), None, "CallingLlm", Some("Display"), true, false),
        row("CallingLlm", Some("Completed"), None, "ProcessingLlmResponse", None, false, false),
        row("ProcessingLlmResponse", None, Some("has tools"), "ExecutingTools", Some("ExecuteTools"), false, false),
        row("ProcessingLlmResponse", None, None, "Waiting", Some("WaitForInput"), false, false),
        row("CallingLlm", Some("LlmError"), Some("retries + 1 < max"), "Error", Some("ScheduleRetry"), false, false),
        row("CallingLlm", Some("LlmError"), None, "Waiting", Some("DisplayError"), false, false),
        row("Error", Some("RetryFired"), None, "CallingLlm", Some("SendLlmRequest"), false, false),
        row(
            "ExecutingTools",
            Some("ToolDone"),
            Some("some pending"),
            "ExecutingTools",
            Some("WaitForInput"),
            true,
            false,
        ),
        row("ExecutingTools", Some("ToolDone"), Some("all done"), "CallingLlm", Some("SendLlmRequest"), false, false),
        row("CallingLlm", Some("Interrupted"), None, "Waiting", Some("WaitForInput"), false, false),
        row("ExecutingTools", Some("Interrupted"), None, "Waiting", Some("WaitForInput"), false, false),
        row("Error", Some("Interrupted"), None, "Waiting", Some("WaitForInput"), false, false),
        row("Waiting", Some("Shutdown"), None, "Done", Some("Shutdown"), false, true),
        row("CallingLlm", Some("Shutdown"), None, "Done", Some("Shutdown"), false, true),
        row("ProcessingLlmResponse", Some("Shutdown"), None, "Done", Some("Shutdown"), false, true),
        row("ExecutingTools", Some("Shutdown"), None, "Done", Some("Shutdown"), false, true),
        row("Error", Some("Shutdown"), None, "Done", Some("Shutdown"), false, true),
    ],
    ignored: &[("Waiting", "Interrupted")],
    fallback: "WaitForInput",
    mermaid: "stateDiagram-v2\n",
};

impl Agent {
    fn hop<O: Observer<Self> + ?Sized>(
        observer: &mut O,
        from: StateKind,
        event: Option<EventKind>,
        row: usize,
        to: &State,
        action: Option<&Action>,
    ) {
        observer.on_transition(&Step { from, event, to: to.kind(), action: action.map(Kinded::kind), row });
    }

    /// One step; `None` when no row accepts the event (state unchanged).
    fn step<O: Observer<Self> + ?Sized>(&mut self, event: Event, observer: &mut O) -> Option<Action> {
        let from = self.state.kind();
        let event_kind = event.kind();
        let ev = Some(event_kind);
        let ctx = &mut self.context;
        let (next, action, row) = match (&mut self.state, event) {
            (State::Done, _) => return None,
            (_, Event::Shutdown) => {
                let row = ROW_SHUTDOWN + DESCRIPTION.states.iter().position(|s| s.name == from.name()).unwrap_or(0);
                (State::Done, Action::Shutdown, row)
            }
            (State::Waiting, Event::UserInput(text)) => {
                ctx.inputs.push(text);
                (
                    State::CallingLlm { retries: 0, text: String::new() },
                    Action::SendLlmRequest { attempt: 1 },
                    ROW_INPUT,
                )
            }
            (State::CallingLlm { text, .. }, Event::Delta(delta)) => {
                text.push_str(&delta);
                let action = Action::Display(delta);
                Self::hop(observer, from, ev, ROW_DELTA, &self.state, Some(&action));
                return Some(action);
            }
            (State::CallingLlm { text, .. }, Event::Completed { tool_calls }) => {
                let text = std::mem::take(text);
                let processing = State::ProcessingLlmResponse { text, tool_calls };
                Self::hop(observer, from, ev, ROW_COMPLETED, &processing, None);
                // Resolve the transient state within the same call.
                let State::ProcessingLlmResponse { text, tool_calls } = processing else { unreachable!("just built") };
                self.context.transcript.push(text);
                let (next, action, row) = if tool_calls.is_empty() {
                    (State::Waiting, Action::WaitForInput, ROW_NO_TOOLS)
                } else {
                    (
                        State::ExecutingTools { pending: tool_calls.clone(), results: Vec::new() },
                        Action::ExecuteTools(tool_calls),
                        ROW_HAS_TOOLS,
                    )
                };
                Self::hop(observer, StateKind::ProcessingLlmResponse, None, row, &next, Some(&action));
                self.state = next;
                return Some(action);
            }
            (State::CallingLlm { retries, .. }, Event::LlmError) => {
                if *retries + 1 < ctx.max_attempts {
                    let retries = *retries + 1;
                    (State::Error { retries }, Action::ScheduleRetry { retry: retries }, ROW_RETRY)
                } else {
                    (State::Waiting, Action::DisplayError, ROW_GIVE_UP)
                }
            }
            (State::Error { retries }, Event::RetryFired) => (
                State::CallingLlm { retries: *retries, text: String::new() },
                Action::SendLlmRequest { attempt: *retries + 1 },
                ROW_RETRY_FIRED,
            ),
            (State::ExecutingTools { pending, results }, Event::ToolDone { id, ok }) => {
                let Some(index) = pending.iter().position(|p| *p == id) else {
                    observer.on_unhandled(&Unhandled {
                        state: Status::In(from),
                        event: event_kind,
                        reason: UnhandledReason::Refused,
                    });
                    return Some(Action::WaitForInput);
                };
                pending.remove(index);
                results.push((id, ok));
                if pending.is_empty() {
                    ctx.tool_batches.push(std::mem::take(results));
                    (
                        State::CallingLlm { retries: 0, text: String::new() },
                        Action::SendLlmRequest { attempt: 1 },
                        ROW_TOOLS_DONE,
                    )
                } else {
                    let action = Action::WaitForInput;
                    Self::hop(observer, from, ev, ROW_TOOL_PENDING, &self.state, Some(&action));
                    return Some(action);
                }
            }
            (State::CallingLlm { text, .. }, Event::Interrupted) => {
                ctx.transcript.push(format!("{text} [interrupted]"));
                (State::Waiting, Action::WaitForInput, ROW_INTERRUPT_LLM)
            }
            (State::ExecutingTools { results, .. }, Event::Interrupted) => {
                ctx.tool_batches.push(std::mem::take(results));
                (State::Waiting, Action::WaitForInput, ROW_INTERRUPT_TOOLS)
            }
            (State::Error { .. }, Event::Interrupted) => (State::Waiting, Action::WaitForInput, ROW_INTERRUPT_ERROR),
            (State::Waiting, Event::Interrupted) => {
                observer.on_unhandled(&Unhandled {
                    state: Status::In(from),
                    event: event_kind,
                    reason: UnhandledReason::Ignored,
                });
                return Some(Action::WaitForInput);
            }
            _ => return None,
        };
        Self::hop(observer, from, ev, row, &next, Some(&action));
        self.state = next;
        Some(action)
    }
}

impl StateMachine for Agent {
    type State = State;
    type Event = Event;
    type Action = Action;
    type Context = Context;

    const DESCRIPTION: &'static Description = &DESCRIPTION;

    fn handle_event(&mut self, event: Event) -> Action {
        self.handle_event_with(event, &mut ())
    }

    fn handle_event_with<O: Observer<Self> + ?Sized>(&mut self, event: Event, observer: &mut O) -> Action {
        let state = Status::In(self.state.kind());
        let event = (event.kind(), event);
        self.step(event.1, observer).unwrap_or_else(|| {
            observer.on_unhandled(&Unhandled { state, event: event.0, reason: UnhandledReason::NoRow });
            Action::WaitForInput
        })
    }

    fn state(&self) -> &State {
        &self.state
    }

    fn from_parts(state: State, context: Context) -> Self {
        Self { state, context }
    }

    fn is_poisoned(&self) -> bool {
        false
    }

    fn context(&self) -> &Context {
        &self.context
    }

    fn context_mut(&mut self) -> &mut Context {
        &mut self.context
    }
}

/// The usual configuration: interrupt and shutdown events, event log, and
/// a tracker of its own.
pub(crate) fn config() -> ExecutorConfig<Agent> {
    ExecutorConfig::new()
        .interrupt_event(EventKind::Interrupted, |_cause| Event::Interrupted)
        .shutdown_event(|| Some(Event::Shutdown))
        .record_events()
        .tracker(TaskTracker::new())
}

/// Asserts that the history's hops chain: each `to` is the next `from`.
pub(crate) fn assert_chained(history: &agent_fsm::runtime::History<Agent>) {
    let hops: Vec<_> = history.transitions().collect();
    for pair in hops.windows(2) {
        assert_eq!(pair[0].to, pair[1].from, "hops do not chain: {pair:?}");
    }
}

/// A task that counts the transitions and lag notices `handle`'s
/// subscription receives until the feed ends, already waiting in `recv`
/// when this returns.
pub(crate) async fn parked_reader<M, O>(
    handle: &agent_fsm::runtime::MachineHandle<M, O>,
) -> tokio::task::JoinHandle<(usize, u64)>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    O: Clone + Send + 'static,
{
    let mut subscription = handle.subscribe();
    let reader = tokio::spawn(async move {
        let (mut transitions, mut lagged) = (0, 0);
        while let Some(notification) = subscription.recv().await {
            match notification {
                agent_fsm::runtime::Notification::Transition(_) => transitions += 1,
                agent_fsm::runtime::Notification::Lagged(missed) => lagged += missed,
                _ => {}
            }
        }
        (transitions, lagged)
    });
    tokio::task::yield_now().await;
    reader
}
