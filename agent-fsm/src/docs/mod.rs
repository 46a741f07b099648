//! The guides, one page each, to read after the [crate root](crate):
//!
//! | page | read it for |
//! | --- | --- |
//! | [`dsl`] | the `#[state_machine]` DSL reference: the module, rows, arguments, what is generated, compile errors, variants, adding a state |
//! | [`runtime_guide`] | how the tokio runtime delivers events and runs effect work: ordering, input during work, timers, interrupts, shutdown, failure |
//! | [`guarantees`] | what agent-fsm promises, part by part, and what it does not |
//! | [`performance`] | the benchmark figures against hand-written code and peer crates, and how they were measured |
//!
//! These modules hold no items, only documentation; every example in them
//! runs as a doc test. What the guides describe can be read from a machine
//! too: the table the macro generated, as data.
//!
//! ```
//! use agent_fsm::StateMachine;
//!
//! #[agent_fsm::state_machine(fallback = Nothing)]
//! mod lamp {
//!     #[states]
//!     #[derive(Debug)]
//!     pub enum State { #[initial] Off, On }
//!     #[events]
//!     #[derive(Debug)]
//!     pub enum Event { Toggle }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing }
//!     transitions! {
//!         Off + Toggle => On / Nothing,
//!         On + Toggle => Off / Nothing,
//!     }
//! }
//!
//! let table = lamp::Machine::DESCRIPTION;
//! assert_eq!(table.events, ["Toggle"]);
//! assert_eq!(table.transitions.len(), 2);
//! assert!(table.mermaid.contains("Off --> On"));
//! ```

// The DSL reference lives in the repository's docs/dsl.md, so that it
// reads on its own too; included here so that its examples are tested and
// its links resolve.
#[doc = include_str!("../../../docs/dsl.md")]
pub mod dsl {}

#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub mod runtime_guide;

pub mod guarantees;

// The figures live in the repository's docs/performance.md, beside the
// benchmarks that produce them.
#[doc = include_str!("../../../docs/performance.md")]
pub mod performance {}
