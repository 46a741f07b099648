//! The four reference agent machines (Loom, Sketch, Shadow's runtime,
//! bob's runner), written as `#[state_machine]` tables and shared by the
//! examples, the workspace tests and the benches.
//!
//! - [`loom`]: the Loom coding agent: streaming LLM turns, concurrent tool
//!   calls tracked by call id, a post-tool hook and bounded retries.
//! - [`coding_agent`]: the pieces of the demo agent: a scripted model and
//!   the real OpenAI-compatible and Anthropic clients behind
//!   [`agent_fsm::llm::Provider`], real tools in a workspace, and Loom's
//!   effects. `cargo run --example coding_agent` runs it scripted and
//!   offline; with `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` set (or
//!   `--provider openai|anthropic --base-url URL --model M`), against the
//!   real model ([`coding_agent::model`]).
//! - [`fleet_agent`]: the fleet's demo agent, a tool loop with human
//!   approvals whose final state shows each event applied once, and the
//!   worker processes, senders and checks of `cargo run --example fleet`.
//! - [`loom_with_permission`]: Loom plus a permission step before mutating
//!   tools, declared as a variant of the Loom table.
//! - [`bob`]: bob's typestate runner: step by step or to completion, human
//!   approval of tool calls, snapshots between steps.
//! - [`sketch`]: the Sketch agent loop: sixteen states, every edge of its
//!   diagram, cancellation, git and formatter checks, a budget.
//! - [`sketch_agent`] and [`shadow_agent`]: those two machines under the
//!   executor, with real tools.
//! - [`shadow`]: the Shadow agent runtime's states: permissions by tool-use
//!   id, subagents, questions to the user and interrupts in every state.

#[doc = include_str!("../docs/diagrams.md")]
pub mod diagrams {}

pub mod bob;
pub mod coding_agent;
mod fingerprint;
pub mod fleet_agent;
pub mod loom;
pub mod loom_with_permission;
pub mod shadow;
pub mod shadow_agent;
pub mod sketch;
pub mod sketch_agent;

/// The README's examples, run as doc tests so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
