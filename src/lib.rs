//! The reference agent machines of the acceptance set, written as
//! `#[state_machine]` tables and shared by the examples, the workspace tests
//! and the benches.
//!
//! - [`loom`]: the Loom coding agent: streaming LLM turns, concurrent tool
//!   calls tracked by call id, a post-tool hook and bounded retries.

pub mod loom;
