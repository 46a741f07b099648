//! Syntax only: the attribute's arguments and the `transitions!` table, one
//! `Parse` impl per production (see docs/dsl.md for the grammar). Nothing
//! here knows which names exist; `model` resolves them.

mod args;
pub(crate) mod depth;
mod outcome;
pub(crate) mod quick;
mod row;
mod table;
mod text;

pub(crate) use args::Args;
pub(crate) use outcome::{Ctor, Init, Outcome};
pub(crate) use row::{Row, Source};
pub(crate) use table::Table;
#[cfg(test)]
pub(crate) use text::one_line;
pub(crate) use text::{key_text, tidy};
