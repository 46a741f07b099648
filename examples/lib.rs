//! The runnable examples of agent-fsm (`cargo run --example NAME` from the
//! workspace root): `coding_agent` (the demo), `runtime_agent`,
//! `sketch_agent`, `loom_with_permission` and `typestate_runner`. This
//! library is empty: the examples use the reference machines of
//! `agent-fsm-examples`.
