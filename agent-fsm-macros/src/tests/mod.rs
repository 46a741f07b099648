//! Unit tests of the macro's phases and the expansion snapshots. They live
//! inside the crate because a proc-macro crate's integration tests cannot
//! call its internals.

mod cases;
mod diagram;
mod escapes;
mod expand;
mod fuzz;
mod krate;
mod layers;
mod phases;
mod quick;
