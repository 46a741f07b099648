//! What agent-fsm promises, part by part, and what it leaves to you. Each
//! promise is stated in full where the part is documented; this page
//! gathers them.
//!
//! # The table, at compile time
//!
//! - **Every broken rule in one build, at the token to fix**: unknown
//!   names (with the known ones listed), duplicate and shadowed rows, rows
//!   leaving a terminal state, states with no way out or unreachable from
//!   the initial one, guards that are not `bool`, transient states that may
//!   not resolve. The full list is in the
//!   [DSL reference](super::dsl#compile-errors).
//! - **Every pair decided, if you ask**: with `strict`, a (state, event)
//!   pair that no row and no `=> ignore` covers is a compile error.
//! - **A state added is a state finished**: add the variant alone and the
//!   build says what else it needs, at the new state's name
//!   ([adding a state](super::dsl#adding-a-state-one-edit)).
//!
//! # The machine, at each step
//!
//! The contract of [`StateMachine`](crate::StateMachine):
//!
//! - **Deterministic and pure**: the same state, context and event give the
//!   same next state and action. `handle_event` performs no I/O and never
//!   blocks, so a table is tested by feeding it events, and an event log
//!   replays to the same states ([`replay`](crate::runtime::replay)).
//! - **No panic of its own on any event**: an event no row accepts leaves
//!   the state unchanged, is logged (a `tracing` warning, or debug for an
//!   `=> ignore` pair) and returns the table's fallback action.
//! - **Never at rest in a transient state**: transient states resolve
//!   inside the same call. If code of a row's own panics while the state is
//!   taken out, the machine is poisoned rather than left half-moved: it
//!   says so ([`is_poisoned`](crate::StateMachine::is_poisoned)) and
//!   returns the fallback action for every later event.
//! - **Carried data moves, never clones**: a conversation carried by every
//!   state goes from one state to the next by move, so a step costs the
//!   same at 10 messages as at 10,000 ([performance](super::performance)).
//!
//! # The runtime
//!
//! Stated in full in the [runtime guide](super::runtime_guide):
//!
//! - **One path into `handle_event`**: events never race. Immediate events
//!   come first, effect events in the order they arrive (a stream's items
//!   in order, task results in completion order).
//! - **Input waits for the work, and is never dropped**: an event sent
//!   through a handle is delivered only when no stream, task or `pause` is
//!   in flight, in the order received, so a message typed while tools run
//!   comes after their results (the example below). The inbox is bounded:
//!   a sender waits rather than an event being lost. Events the table
//!   marks `#[during_work]` are the exception the table chooses.
//! - **Every task answers exactly once**: a task that returns, panics,
//!   times out or is cancelled yields one event, so every tool call gets a
//!   result.
//! - **An interrupt is a protocol, not an abort**: work in flight is
//!   cancelled, each cancelled task still answers, then the interrupt event
//!   is delivered; the worker checks before its first step that every
//!   state the machine can rest in handles it.
//! - **Shutdown leaves nothing running**: from any state, in-flight work is
//!   cancelled, events already accepted are delivered, every task is
//!   awaited, and the handles go on reading the final machine and its
//!   history.
//! - **A failure is reported, not hidden**: nothing in the executor panics
//!   on bad input; a panic in the machine or the effects is stored once,
//!   and every later request on any handle returns it
//!   ([`WorkerError`](crate::runtime::WorkerError)).
//! - **Limits are per agent**: inbox, concurrency, timeouts and logs, even
//!   for agents spawned from one configuration.
//!
//! ```
//! use agent_fsm::runtime::{EffectContext, ExecutorConfig, from_fn, spawn};
//! use std::time::Duration;
//!
//! #[agent_fsm::state_machine(fallback = Nothing)]
//! mod desk {
//!     #[states]
//!     #[carry(seen: Vec<String>)]
//!     #[derive(Debug, Clone, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         Ready,
//!         Working { left: u32 },
//!     }
//!     #[events]
//!     #[derive(Debug, Clone)]
//!     pub enum Event { Start, ToolDone(String), Input(String) }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing, RunTools }
//!     transitions! {
//!         Ready + Start => Working { left: 2 } / RunTools,
//!         Working { left } + ToolDone(name) [*left > 1] => { seen.push(name); *left -= 1; } Working / Nothing,
//!         Working + ToolDone(name) => { seen.push(name); } Ready / Nothing,
//!         // No row for `Working + Input`: input must not arrive mid-round.
//!         Ready + Input(text) => { seen.push(text); } Ready / Nothing,
//!     }
//! }
//! use desk::{Action, Event, Machine, State};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let effects = from_fn(|action, cx: &mut EffectContext<'_, Machine, ()>| {
//!     if let Action::RunTools = action {
//!         for (tool, ms) in [("a", 10), ("b", 20)] {
//!             cx.spawn_task(
//!                 tool,
//!                 async move {
//!                     tokio::time::sleep(Duration::from_millis(ms)).await;
//!                     Event::ToolDone(tool.into())
//!                 },
//!                 |key, _why| Event::ToolDone(key),
//!             );
//!         }
//!     }
//! });
//! let handle = spawn(Machine::new(), effects, ExecutorConfig::new());
//! handle.send(Event::Start).await?;
//! handle.send(Event::Input("hello".into())).await?; // typed while the tools run
//! handle.wait_idle().await?;
//! let seen = vec!["a".to_owned(), "b".to_owned(), "hello".to_owned()];
//! assert_eq!(handle.state().await?, State::Ready { seen });
//! # Ok(())
//! # }
//! ```
//!
//! # Snapshots and stores
//!
//! - **A resumed machine is in a state it could have reached**: a snapshot
//!   of another machine, an unknown state, a transient state, data of the
//!   wrong shape or data breaking the machine's declared invariants is
//!   refused with a typed error, never turned into a wrong state
//!   ([`snapshot`](crate::snapshot)).
//! - **A step is stored whole or not at all**: appending an event, its
//!   sequence number, the work it starts and finishes and an optional
//!   snapshot is one transaction; sequence numbers are gapless, a second
//!   writer gets a conflict, a corrupt row or a newer format is a typed
//!   error, and the last good checkpoint stays readable
//!   ([`store`](crate::store)).
//! - **A durable agent takes each logged event once**: spawned again from
//!   its store, it replays its log without performing the actions again,
//!   and continues with its work in flight, its timers (for the time they
//!   had left) and its pending sends
//!   ([`store::Durable`](crate::store::Durable)).
//! - **In a fleet, one worker writes for an agent per epoch, and the inbox
//!   is applied exactly once, in order**: each claim raises the lease's
//!   epoch and every write is fenced by it, so a worker paused past its
//!   lease never writes again for an agent another worker claimed; an
//!   event sent to an agent is applied by exactly one step, in the order
//!   sent, across hand-overs ([`fleet`](crate::fleet)).
//!
//! # Models and tools
//!
//! - **A model's stream ends once, and says how**: text and tool-call
//!   deltas as they arrive, then one completed reply or one classified
//!   error that says whether a retry may help ([`llm`](crate::llm)).
//! - **A tool call never panics the agent**: an unknown tool, bad
//!   arguments, an error, a panic or a timeout becomes an error result the
//!   model reads, and a round's results go back in call order
//!   ([`tool`](crate::tool)).
//! - **File tools stay in their directory**: every path is resolved beneath
//!   the workspace through a directory handle, so no absolute path, `..` or
//!   symlink leads out; a shell command's whole process group is killed
//!   when it exits, times out or is dropped ([`tools`](crate::tools)).
//!
//! # What is not promised
//!
//! - **The shell is not a sandbox**: a command runs as the user running
//!   the agent and can reach whatever that user can. Run the agent in a
//!   container or VM when that matters.
//! - **A snapshot holds no work in flight**: take one when the agent is
//!   idle; a machine resumed from one taken mid-work waits for events
//!   nothing will produce.
//! - **Work performed again is performed at least once**: a durable agent
//!   ([`store::Durable`](crate::store::Durable)) performs again, after a
//!   crash, the tasks and streams whose end it had not written, under the
//!   same key; a tool that must not act twice deduplicates by it. Events
//!   still in the inbox when an agent stops are not written. In a fleet,
//!   the agents of a worker that died wait for their leases to expire.
//! - **Cancellation waits for an `.await`**: a cancelled task stops at its
//!   next `.await`; blocking work in between runs to its end.
//! - **Task results come in completion order**: a machine that needs call
//!   order orders them itself (a [`ToolRound`](crate::tool::ToolRound)
//!   does).
//! - **Timers do not outlive their state**: a `deadline` or `pause` whose
//!   state was left is dropped; streams and tasks, on the contrary, run to
//!   their end unless cancelled by key.
