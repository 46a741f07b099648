//! LLM-agent state machines as one compile-checked transition table, driven
//! on tokio.
//!
//! Write the agent loop once as a table inside `#[state_machine]`; the macro
//! turns it into state, event and action enums, an exhaustive synchronous
//! `handle_event`, names, a catch-all branch, introspection and a diagram,
//! and the runtime drives any such machine.
//!
#![doc = include_str!("../../docs/dsl.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Lets the generated code name `::agent_fsm` from inside this crate's own
// tests and doc tests.
#[allow(unused_extern_crates)]
extern crate self as agent_fsm;

mod machine;

#[cfg(feature = "runtime")]
pub mod runtime;
#[cfg(feature = "serde")]
pub mod snapshot;

#[cfg(feature = "runtime")]
pub use runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, RetryPolicy};

pub use agent_fsm_macros::state_machine;
pub use machine::{
    Description, Named, Observer, StateInfo, StateMachine, Step, Transition, Unhandled, UnhandledReason,
};

/// Items the generated code names. Not part of the public API: they may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use ::agent_fsm_macros::__merge_variant as merge_variant;
    pub use ::core;
    #[cfg(feature = "serde")]
    pub use ::serde;
    pub use ::tracing;
}
