//! LLM-agent state machines as one compile-checked transition table, driven
//! on tokio.
//!
//! An agent loop is a state machine whether it is written as one or not.
//! With agent-fsm it is written as one: a table inside `#[state_machine]`,
//! one row per line, plain Rust in guards and payloads. The macro turns it
//! into state, event and action enums and a synchronous, exhaustive
//! `handle_event`, and rejects a broken table at compile time. The machine
//! only decides; your [`Effects`] do the work (a model call, a tool, a
//! timer), and the [`runtime`] drives the two on tokio, feeding what the work
//! produces back into the machine one event at a time.
//!
//! # A small agent
//!
//! ```
//! use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, ExecutorConfig, Notification, Topics, spawn};
//! use agent_fsm::state_machine;
//!
//! // The table: what the agent does next, whoever does the work.
//! #[state_machine(fallback = Nothing)]
//! mod agent {
//!     #[states]
//!     #[carry(conversation: Vec<String>)] // every state holds it; rows move it, never clone it
//!     #[derive(Debug, Clone, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         WaitingForUser,
//!         CallingModel { attempt: u32 },
//!     }
//!
//!     #[events]
//!     #[derive(Debug, Clone)]
//!     pub enum Event {
//!         UserSaid(String),
//!         ModelSaid(String),
//!         ModelFailed(String),
//!     }
//!
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action {
//!         Nothing,
//!         CallModel(Vec<String>),
//!         Show(String),
//!     }
//!
//!     transitions! {
//!         WaitingForUser + UserSaid(text)
//!             => { conversation.push(text); } CallingModel { attempt: 1 } / CallModel(conversation.clone()),
//!         CallingModel + ModelSaid(reply)
//!             => { conversation.push(reply.clone()); } WaitingForUser / Show(reply),
//!         CallingModel { attempt } + ModelFailed(_) [*attempt < 3]
//!             => CallingModel { attempt: attempt + 1 } / CallModel(conversation.clone()),
//!         CallingModel + ModelFailed(why) => WaitingForUser / Show(format!("no reply: {why}")),
//!     }
//! }
//! use agent::{Action, Event, Machine, State};
//!
//! /// The effects: how each action is done. Here the "model" echoes.
//! struct Model;
//!
//! impl Effects<Machine> for Model {
//!     type Output = String; // what subscribers receive
//!
//!     fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Machine, String>) {
//!         match action {
//!             // A task of its own; what it returns is the machine's next event.
//!             Action::CallModel(conversation) => cx.spawn_task(
//!                 "model",
//!                 async move { Event::ModelSaid(format!("you said {:?}", conversation.last())) },
//!                 // A panic, a timeout or a cancellation still answers.
//!                 |_key, why: EffectFailure| Event::ModelFailed(why.to_string()),
//!             ),
//!             Action::Show(text) => cx.output(text),
//!             Action::Nothing => {}
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // One worker task owns the machine and the effects; the handle talks to it.
//! let handle = spawn(Machine::new(), Model, ExecutorConfig::new());
//! let mut replies = handle.subscribe_to(Topics::OUTPUT);
//!
//! handle.send(Event::UserSaid("hello".into())).await?;
//! handle.wait_idle().await?; // the model's task has answered
//! let Ok(Notification::Output(reply)) = replies.try_recv() else { panic!("no reply") };
//! assert_eq!(reply, r#"you said Some("hello")"#);
//! assert_eq!(handle.state().await?, State::WaitingForUser { conversation: vec!["hello".into(), reply] });
//! handle.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The same table runs without the runtime: `Machine::new()`, then
//! `handle_event(event)` returns the action, so a test walks its rows with
//! no tokio at all. `Machine::DESCRIPTION` holds the rows, and a Mermaid
//! diagram of them appears on the machine's rustdoc page.
//!
//! # The guides
//!
//! | page | read it for |
//! | --- | --- |
//! | [`docs::dsl`] | the DSL reference: every construct of the table, what the macro generates, its compile errors, variants |
//! | [`docs::runtime_guide`] | how the runtime orders events, runs tasks and timers, interrupts, shuts down and fails |
//! | [`docs::guarantees`] | what agent-fsm promises, part by part, and what it does not |
//! | [`docs::performance`] | the figures against hand-written code and peer crates, and how they were measured |
//!
//! # The crate
//!
//! | item | what it is |
//! | --- | --- |
//! | [`state_machine`] | the macro: a table in, a machine out |
//! | [`StateMachine`], [`Kind`], [`Observer`], [`Recorder`] | what every generated machine implements, its fieldless kinds, and what watches its steps; generic code (the runtime, tests) is written against these |
//! | [`runtime`] | the tokio worker, its handle, effects, history and retry policy |
//! | [`snapshot`] | a machine saved to JSON between two steps and resumed |
//! | [`store`] | checkpoint stores: an agent's event log and snapshots by agent id; restore, time travel, fork |
//! | [`llm`] | conversation types, streamed events, classified errors, and streaming clients for OpenAI-compatible servers and Anthropic |
//! | [`tool`] | typed tools with derived JSON schemas, run as a model calls them; an MCP server's tools beside them |
//! | [`tools`] | workspace tools: files that cannot leave one directory, a shell killed as a process group |
//!
//! # Features
//!
//! | feature | default | adds |
//! | --- | --- | --- |
//! | `runtime` | yes | the tokio executor, its handle, history and retry policy ([`runtime`]) |
//! | `serde` | no | snapshots: serialize a machine between steps ([`snapshot`]) |
//! | `llm` | no | provider-neutral conversation types, streamed events, classified provider errors and the `Provider` trait ([`llm`]); serde and futures only |
//! | `openai` | no | `llm` and the OpenAI-compatible Chat Completions streaming client (reqwest on rustls) |
//! | `anthropic` | no | `llm` and the Anthropic Messages streaming client (reqwest on rustls) |
//! | `tool` | no | `llm`, `runtime` and typed tools: a tool as a Rust type with a schemars-derived schema, a `ToolSet` running a model's calls as keyed tasks ([`tool`]) |
//! | `tools` | no | workspace tools: file tools confined to a directory, a shell run as a process group with a timeout and an output cap ([`tools`]) |
//! | `store` | no | `serde` and checkpoint stores: an agent's event log, snapshots and effect work in flight by agent id; restore, time travel and fork; an in-memory store ([`store`]) |
//! | `sqlite` | no | `store` and the embedded SQLite store (rusqlite, SQLite bundled; one file, WAL) |
//! | `postgres` | no | `store` and the Postgres store, with fencing for workers sharing it (the `postgres` client, on threads of its own) |
//! | `fleet` | no | `postgres` and `runtime`: worker processes sharing agents through Postgres, with leases, fencing and a durable inbox (`tokio-postgres`) ([`fleet`]) |
//! | `mcp` | no | `tool` and the tools of a Model Context Protocol server over stdio, through `rmcp` ([`tool::mcp`]) |
//! | `otel` | no | OpenTelemetry spans in the GenAI conventions (`invoke_agent`, `chat`, `execute_tool`, one per transition) through `tracing-opentelemetry` ([`telemetry`]) |
//! | `metrics` | no | transitions, time in state, refused events, tool calls and tokens through the `metrics` facade ([`telemetry`]) |
//!
//! On docs.rs, which documents every feature, each item behind one is
//! labelled with it.
#![cfg_attr(docsrs, feature(doc_cfg))]
// The guides link to the modules of every feature; a build of the docs
// with some of them off (docs.rs builds with all) leaves those links
// unresolved, which is no fault of the docs.
#![cfg_attr(
    not(all(
        feature = "fleet",
        feature = "inspector",
        feature = "otel",
        feature = "metrics",
        feature = "anthropic",
        feature = "openai",
        feature = "mcp",
        feature = "sqlite",
        feature = "postgres",
        feature = "tools"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

// Lets the generated code name `::agent_fsm` from inside this crate's own
// tests and doc tests.
#[allow(unused_extern_crates)]
extern crate self as agent_fsm;

pub mod docs;
#[cfg(feature = "serde")]
mod finite;
#[cfg(feature = "fleet")]
#[cfg_attr(docsrs, doc(cfg(feature = "fleet")))]
pub mod fleet;
mod kind;
mod machine;
#[cfg(any(feature = "runtime", feature = "store"))]
mod panics;
#[cfg(any(feature = "inspector", feature = "fleet"))]
mod random;

#[cfg(feature = "inspector")]
#[cfg_attr(docsrs, doc(cfg(feature = "inspector")))]
pub mod inspector;
#[cfg(feature = "llm")]
#[cfg_attr(docsrs, doc(cfg(feature = "llm")))]
pub mod llm;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod runtime;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod snapshot;
#[cfg(feature = "store")]
#[cfg_attr(docsrs, doc(cfg(feature = "store")))]
pub mod store;
#[cfg(any(feature = "otel", feature = "metrics"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "otel", feature = "metrics"))))]
pub mod telemetry;
#[cfg(feature = "tool")]
#[cfg_attr(docsrs, doc(cfg(feature = "tool")))]
pub mod tool;
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
pub mod tools;
#[cfg(all(test, not(feature = "serde")))]
mod without_serde;

#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, RetryPolicy};

pub use agent_fsm_macros::state_machine;
pub use kind::{ActionKindOf, EventKindOf, Kind, Kinded, StateKindOf, Status};
pub use machine::{
    Description, Hop, HopNames, Named, Observer, Recorder, StateInfo, StateMachine, Step, StepOf, Transition,
    Unhandled, UnhandledOf, UnhandledReason,
};

/// What a `serde` machine expands to with the `serde` feature on: nothing.
#[cfg(feature = "serde")]
#[doc(hidden)]
#[macro_export]
macro_rules! __agent_fsm_serde_enabled {
    () => {};
}

/// What a `serde` machine expands to with the `serde` feature off: an
/// error saying to turn it on.
#[cfg(not(feature = "serde"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __agent_fsm_serde_missing {
    () => {
        ::core::compile_error! {
            "`serde` needs agent-fsm's `serde` feature: `agent-fsm = { version = \"0.1\", features = [\"serde\"] }` in Cargo.toml"
        }
    };
}

/// Items the generated code names. Not part of the public API: they may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use ::agent_fsm_macros::__merge_variant as merge_variant;
    pub use ::core;
    #[cfg(feature = "serde")]
    pub use ::serde;

    /// Without the `serde` feature, the derives a `serde` machine names
    /// resolve to stand-ins that add nothing, and
    /// `serde_feature_required` is its one error.
    #[cfg(not(feature = "serde"))]
    pub mod serde {
        pub use ::agent_fsm_macros::__WithoutSerde as Deserialize;
        pub use ::agent_fsm_macros::__WithoutSerde as Serialize;
    }
    #[cfg(feature = "serde")]
    pub use crate::__agent_fsm_serde_enabled as serde_feature_required;
    #[cfg(not(feature = "serde"))]
    pub use crate::__agent_fsm_serde_missing as serde_feature_required;
    pub use ::tracing;

    use crate::{Description, Kind, StateInfo, Status, Step, Transition, Unhandled, UnhandledReason};

    /// A state of `DESCRIPTION.states`; `flags` is `1` initial, `2`
    /// terminal, `4` transient.
    #[must_use]
    pub const fn state(name: &'static str, flags: u8) -> StateInfo {
        StateInfo { name, initial: flags & 1 != 0, terminal: flags & 2 != 0, transient: flags & 4 != 0 }
    }

    /// The name lists rows index: states, then events, actions, and guard
    /// and pattern texts, each of these three ending in `None` (what a row
    /// without one indexes).
    pub type Names = (
        &'static [StateInfo],
        &'static [Option<&'static str>],
        &'static [Option<&'static str>],
        &'static [Option<&'static str>],
    );

    /// The `N` rows of `DESCRIPTION.transitions`, decoded from `code`:
    /// per row, six indices of `W` bytes each (1, 2 or 4), little-endian
    /// (from, event, guard, pattern, to, action; a missing event, guard,
    /// pattern or action indexes the `None` at the end of its list), then a
    /// flags byte (`1` in place, `2` any-state).
    ///
    /// One byte string is one token, where a row written out was a dozen:
    /// the compiler reads a big table's rows again after every touch. The
    /// loop is written for the compiler's interpreter, which runs it in
    /// every build from scratch and pays for each step: a row is one slice
    /// pattern (its length checked once, not a bounds check per byte), and
    /// 1- and 2-byte indices are read without a call.
    #[must_use]
    pub const fn rows<const N: usize, const W: usize>(names: Names, code: &[u8]) -> [Transition; N] {
        const EMPTY: Transition = Transition {
            from: "",
            event: None,
            guard: None,
            pattern: None,
            to: "",
            action: None,
            in_place: false,
            any_state: false,
        };
        assert!(W == 1 || W == 2 || W == 4, "indices are 1, 2 or 4 bytes wide");
        let (states, events, actions, texts) = names;
        let mut out = [EMPTY; N];
        let mut i = 0;
        let mut code = code;
        // The row from its six indices and flags byte.
        macro_rules! row {
            ($from:expr, $event:expr, $guard:expr, $pattern:expr, $to:expr, $action:expr, $flags:expr) => {
                Transition {
                    from: states[$from].name,
                    event: events[$event],
                    guard: texts[$guard],
                    pattern: texts[$pattern],
                    to: states[$to].name,
                    action: actions[$action],
                    in_place: $flags & 1 != 0,
                    any_state: $flags & 2 != 0,
                }
            };
        }
        while i < N {
            out[i] = match (W, code) {
                (1, [a, b, c, d, e, f, flags, rest @ ..]) => {
                    code = rest;
                    row!(*a as usize, *b as usize, *c as usize, *d as usize, *e as usize, *f as usize, *flags)
                }
                (2, [a0, a1, b0, b1, c0, c1, d0, d1, e0, e1, f0, f1, flags, rest @ ..]) => {
                    code = rest;
                    row!(
                        *a0 as usize | (*a1 as usize) << 8,
                        *b0 as usize | (*b1 as usize) << 8,
                        *c0 as usize | (*c1 as usize) << 8,
                        *d0 as usize | (*d1 as usize) << 8,
                        *e0 as usize | (*e1 as usize) << 8,
                        *f0 as usize | (*f1 as usize) << 8,
                        *flags
                    )
                }
                (4, _) if code.len() >= 25 => {
                    let (row, rest) = code.split_at(25);
                    code = rest;
                    // The `k`th four-byte index.
                    macro_rules! at {
                        ($k:literal) => {
                            u32::from_le_bytes([row[4 * $k], row[4 * $k + 1], row[4 * $k + 2], row[4 * $k + 3]])
                                as usize
                        };
                    }
                    row!(at!(0), at!(1), at!(2), at!(3), at!(4), at!(5), row[24])
                }
                _ => panic!("the rows' byte string is shorter than its count says"),
            };
            i += 1;
        }
        assert!(code.is_empty(), "the rows' byte string is longer than its count says");
        out
    }

    /// Holds a machine's state while its transient states resolve. Unless
    /// [`finish`](Self::finish) is reached, the step unwound (a guard, a
    /// block, a payload or an observer panicked); if it left the machine in
    /// a transient state, the state is emptied: the machine is poisoned
    /// instead of resting there.
    #[derive(Debug)]
    pub struct Settling<'a, S> {
        state: &'a mut Option<S>,
        transient: fn(&S) -> bool,
        done: bool,
    }

    impl<'a, S> Settling<'a, S> {
        /// Starts holding `state`; `transient` tells the states that may
        /// not be rested in.
        #[inline]
        pub fn new(state: &'a mut Option<S>, transient: fn(&S) -> bool) -> Self {
            Settling { state, transient, done: false }
        }

        /// The state, for the rows.
        #[inline]
        pub fn state(&mut self) -> &mut Option<S> {
            self.state
        }

        /// The rows returned: the state stays as they left it.
        #[inline]
        pub fn finish<A>(mut self, action: A) -> A {
            self.done = true;
            action
        }
    }

    impl<S> Drop for Settling<'_, S> {
        #[inline]
        fn drop(&mut self) {
            if !self.done && self.state.as_ref().is_some_and(self.transient) {
                *self.state = None;
            }
        }
    }

    /// The catch-all of every generated machine: decides why no row
    /// accepted the event (no row for the pair, rows that all refused it, a
    /// pair the table ignores, a poisoned machine) from the description,
    /// and logs it. Out of line and cold, so the generated `match` carries
    /// one call here instead of a logging call site per pair.
    #[cold]
    #[inline(never)]
    #[must_use]
    pub fn unhandled<S: Kind, E: Kind>(description: &Description, state: Option<S>, event: E) -> Unhandled<S, E> {
        let machine = description.name;
        let event_kind = event;
        let event = event.name();
        let Some(state_kind) = state else {
            tracing::error!(
                target: "agent_fsm",
                machine,
                event,
                "machine poisoned: an earlier transition did not finish (its row's code panicked or left it early); fallback action returned"
            );
            return Unhandled { state: Status::Poisoned, event: event_kind, reason: UnhandledReason::Poisoned };
        };
        let state = state_kind.name();
        let reason = if description.ignored.iter().any(|&(s, e)| s == state && e == event) {
            tracing::debug!(target: "agent_fsm", machine, state, event, "event ignored by the table");
            UnhandledReason::Ignored
        } else if description.transitions.iter().any(|t| t.from == state && t.event == Some(event)) {
            tracing::warn!(
                target: "agent_fsm",
                machine,
                state,
                event,
                "every row for this state and event refused it (guard or payload pattern); state unchanged, fallback action returned"
            );
            UnhandledReason::Refused
        } else if description.is_terminal(state) {
            tracing::warn!(
                target: "agent_fsm",
                machine,
                state,
                event,
                "no row for this state and event: the state is terminal (mark the pair `=> ignore` if this is expected); state unchanged, fallback action returned"
            );
            UnhandledReason::NoRow
        } else {
            tracing::warn!(
                target: "agent_fsm",
                machine,
                state,
                event,
                "no row for this state and event; state unchanged, fallback action returned"
            );
            UnhandledReason::NoRow
        };
        Unhandled { state: Status::In(state_kind), event: event_kind, reason }
    }

    /// The [`Step`] of row `row` (an index into `DESCRIPTION.transitions`),
    /// read from `code`: per row, four indices of `W` bytes each (1, 2 or
    /// 4), little-endian, into the kinds' `ALL` (from, event, to, action; a
    /// missing event or action indexes one past the end). Kinds rather than
    /// the description's names: a step is then 16 bytes, not four fat
    /// pointers, and an observer compares kinds, not strings.
    #[inline(always)]
    #[must_use]
    pub fn hop<S: Kind, E: Kind, A: Kind, const W: usize>(code: &'static [u8], row: usize) -> Step<S, E, A> {
        let r = &code[row * 4 * W..][..4 * W];
        let at = |k: usize| -> usize {
            match W {
                1 => usize::from(r[k]),
                2 => usize::from(u16::from_le_bytes([r[2 * k], r[2 * k + 1]])),
                _ => u32::from_le_bytes([r[4 * k], r[4 * k + 1], r[4 * k + 2], r[4 * k + 3]]) as usize,
            }
        };
        Step {
            from: S::ALL[at(0)],
            event: E::ALL.get(at(1)).copied(),
            to: S::ALL[at(2)],
            action: A::ALL.get(at(3)).copied(),
            row,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{rows, state};
        use crate::{StateInfo, Transition};

        const STATES: &[StateInfo] = &[state("Idle", 1), state("Check", 4), state("Done", 2)];

        #[test]
        fn rows_and_states_built_from_indices_name_what_they_point_at() {
            assert_eq!(STATES[0], StateInfo { name: "Idle", initial: true, terminal: false, transient: false });
            assert_eq!(STATES[1], StateInfo { name: "Check", initial: false, terminal: false, transient: true });
            assert_eq!(STATES[2], StateInfo { name: "Done", initial: false, terminal: true, transient: false });
            let names: super::Names = (
                STATES,
                &[Some("Go"), Some("Poke"), None],
                &[Some("Start"), Some("Stop"), None],
                &[Some(""), Some("n > 0"), Some("Poke(1)"), None],
            );
            let expected = [
                Transition {
                    from: "Idle",
                    event: Some("Poke"),
                    guard: Some("n > 0"),
                    pattern: Some("Poke(1)"),
                    to: "Idle",
                    action: Some("Stop"),
                    in_place: true,
                    any_state: true,
                },
                Transition {
                    from: "Check",
                    event: None,
                    guard: None,
                    pattern: None,
                    to: "Done",
                    action: None,
                    in_place: false,
                    any_state: false,
                },
            ];
            // One byte per index; a missing one indexes its list's `None`.
            const NARROW: [Transition; 2] = rows::<2, 1>(
                (
                    STATES,
                    &[Some("Go"), Some("Poke"), None],
                    &[Some("Start"), Some("Stop"), None],
                    &[Some(""), Some("n > 0"), Some("Poke(1)"), None],
                ),
                &[0, 1, 1, 2, 0, 1, 3, 1, 2, 3, 3, 2, 2, 0],
            );
            assert_eq!(NARROW, expected);
            // Two bytes per index, little-endian.
            let wide: [Transition; 2] = rows::<2, 2>(
                names,
                &[
                    0, 0, 1, 0, 1, 0, 2, 0, 0, 0, 1, 0, 3, //
                    1, 0, 2, 0, 3, 0, 3, 0, 2, 0, 2, 0, 0,
                ],
            );
            assert_eq!(wide, expected);
            // Four bytes per index, little-endian.
            let widest: [Transition; 2] = rows::<2, 4>(
                names,
                &[
                    0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, //
                    1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0,
                ],
            );
            assert_eq!(widest, expected);
        }
    }
}
