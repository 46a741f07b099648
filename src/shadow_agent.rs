//! The Shadow runtime machine under the executor: permissions, subagents, questions, interrupts.
