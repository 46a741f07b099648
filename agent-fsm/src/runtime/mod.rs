//! The tokio runtime that drives any [`StateMachine`](crate::StateMachine):
//! one worker task owns the machine and its [`Effects`], and cloneable
//! [`MachineHandle`]s talk to it.
//!
//! ```
//! use agent_fsm::runtime::{EffectContext, ExecutorConfig, Outcome, from_fn, spawn};
//! use std::time::Duration;
//!
//! #[agent_fsm::state_machine(fallback = Nothing)]
//! mod door {
//!     #[states]
//!     #[derive(Debug, Clone, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         Closed,
//!         Open,
//!     }
//!     #[events]
//!     #[derive(Debug, Clone)]
//!     pub enum Event { Open, TimedOut }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing, CloseLater }
//!     transitions! {
//!         Closed + Open => Open / CloseLater,
//!         Open + TimedOut => Closed / Nothing,
//!     }
//! }
//! use door::{Action, ActionKind, Event, Machine, State, StateKind};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Effects as a closure: `CloseLater` sets a timer, whose event comes
//! // back into the machine when it fires.
//! let effects = from_fn(|action, cx: &mut EffectContext<'_, Machine, ()>| match action {
//!     Action::CloseLater => cx.deadline(Duration::from_secs(30), Event::TimedOut),
//!     Action::Nothing => {}
//! });
//! let handle = spawn(Machine::new(), effects, ExecutorConfig::new());
//!
//! // `call` waits for the step and says what it did, by kind.
//! let delivered = handle.call(Event::Open).await?;
//! assert!(matches!(
//!     delivered.outcome,
//!     Outcome::Moved { from: StateKind::Closed, to: StateKind::Open, action: ActionKind::CloseLater }
//! ));
//! // No row for `Open + Open`: the state stays, the fallback comes back.
//! assert!(matches!(handle.call(Event::Open).await?.outcome, Outcome::NoRow { .. }));
//!
//! tokio::time::sleep(Duration::from_secs(31)).await; // tokio's clock is paused: no wait
//! assert_eq!(handle.state().await?, State::Closed);
//! assert_eq!(handle.shutdown().await?, StateKind::Closed);
//! # Ok(())
//! # }
//! ```
//!
//! The machine stays synchronous and pure: the worker feeds it one event at
//! a time, hands each returned action to [`Effects::perform`], and turns
//! the work that schedules (streams, tasks, timers) back into events. The
//! [crate root](crate) shows a whole agent (a model call as a task, its
//! reply as an output for subscribers).
//!
//! # The pieces
//!
//! | item | what it is for |
//! | --- | --- |
//! | [`spawn`], [`pair`] | start a worker on the current tokio runtime, or get its future to run yourself |
//! | [`Effects`], [`from_fn`], [`EffectContext`] | perform each action by scheduling work: an event now, a stream, keyed tasks, a timer, an output |
//! | [`TaskOptions`], [`EffectFailure`] | how a task runs, and why a task or stream failed |
//! | [`MachineHandle`] | send events, `call` one and read its [`Outcome`] ([`Delivered`]), read the state and [`History`], subscribe, interrupt, shut down |
//! | [`Subscription`], [`Topics`], [`Notification`], [`StateCopy`] | what another task sees of each step |
//! | [`ExecutorConfig`] | limits, timeouts, the interrupt and shutdown events, an [`Observer`](crate::Observer), the task tracker, a cancellation token |
//! | [`History`], [`replay`], [`TransitionRecord`], [`EventRecord`], [`InterruptRecord`], [`StateTime`] | the latest hops with their times, and an event log that replays to the same states |
//! | [`RetryPolicy`] | exponential backoff with jitter, honouring a server's `retry-after` |
//! | [`SendError`], [`RequestError`], [`WorkerError`], [`Performing`], [`ConfigError`], [`ReplayError`], [`TryRecvError`], [`StoreFailure`] | what can fail, typed |
//!
//! # The rules
//!
//! The worker keeps a few rules, stated in full on the
//! [runtime guide](crate::docs::runtime_guide) page:
//!
//! - [Ordering](crate::docs::runtime_guide#ordering): one path into
//!   `handle_event`; immediate events first, effect events as they arrive,
//!   input sent through a handle only when no effect work is in flight
//!   (except the events marked `#[during_work]`), control requests between
//!   two steps.
//! - [Status and notifications](crate::docs::runtime_guide#status-and-notifications):
//!   when `status`, `steps` and subscribers see a step.
//! - [Tracing](crate::docs::runtime_guide#tracing): the `step` span each
//!   event is handled in, and the work it starts runs in.
//! - [Tasks and timers](crate::docs::runtime_guide#tasks-and-timers):
//!   concurrency, timeouts and cancellation; a `deadline` lets input
//!   through, a `pause` holds it back; timers belong to the visit of a state.
//! - [Interrupt](crate::docs::runtime_guide#cancellation-interrupt),
//!   [shutdown](crate::docs::runtime_guide#shutdown),
//!   [snapshots](crate::docs::runtime_guide#snapshots) and
//!   [failure](crate::docs::runtime_guide#failure): what is cancelled,
//!   delivered and kept when an agent is interrupted, stops or fails.

mod config;
pub(crate) mod durable;
mod effects;
mod error;
mod error_traits;
mod executor;
mod feed;
mod handle;
mod history;
mod notification;
mod outcome;
mod retry;
mod task;
pub(crate) mod work;

#[cfg(test)]
mod layers;
#[cfg(test)]
mod test_machine;

pub use config::ExecutorConfig;
pub use effects::{EffectContext, Effects, FnEffects, from_fn};
pub use error::{
    ConfigError, Performing, ReplayError, RequestError, SendError, StoreFailure, TryRecvError, WorkerError,
};
#[cfg(feature = "store")]
pub(crate) use executor::pair_with;
pub use executor::{pair, spawn};
pub use feed::{Subscription, Topics};
pub use handle::MachineHandle;
pub use history::{
    EventRecord, EventRecordOf, History, InterruptRecord, StateTime, TransitionRecord, TransitionRecordOf, replay,
};
pub use notification::{Notification, StateCopy};
pub use outcome::{Delivered, DeliveredTo, Outcome, OutcomeOf};
pub use retry::RetryPolicy;
pub use task::{EffectFailure, TaskOptions};
