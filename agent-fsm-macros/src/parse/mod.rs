//! Syntax only: the attribute's arguments and the `transitions!` table, one
//! `Parse` impl per production (see docs/dsl.md for the grammar). Nothing
//! here knows which names exist; `model.rs` resolves them.

mod args;
pub(crate) mod depth;
pub(crate) mod quick;
mod row;

pub(crate) use args::Args;
#[cfg(test)]
pub(crate) use row::one_line;
pub(crate) use row::{Ctor, Init, Outcome, Row, Source, Table, key_text, tidy};
