//! The `#[state_machine]` attribute macro of agent-fsm.
//!
//! Depend on `agent-fsm`, which re-exports this macro, documents the DSL and
//! provides the runtime the generated code names. This crate only turns
//! tokens into tokens: `parse` (syntax) -> `model` (names resolved) ->
//! `validate` (rules over the whole table) -> `codegen`, driven by
//! `expand` (`fallback` on error, `variant` for `extends`). Each phase
//! names only earlier ones and `shared`, `ctxt` and `kw` below them all
//! (`src/tests/layers.rs` checks it).

mod codegen;
mod ctxt;
mod expand;
mod fallback;
mod kw;
mod model;
mod parse;
mod shared;
mod validate;
mod variant;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Turns a module holding `#[states]`, `#[events]` and `#[actions]` enums
/// and a `transitions! { State + Event => Next / Action, .. }` table into a
/// state machine (`agent_fsm::StateMachine`).
///
/// Arguments, `#[state_machine(fallback = Nothing, ..)]`:
/// - `fallback = Action`: required; the action an event no row accepts returns
/// - `name = Agent`: the machine type's name (default `Machine`)
/// - `strict`: every (state, event) pair needs a row or `=> ignore`
/// - `serde`: serde derives on the three enums (agent-fsm's `serde` feature)
/// - `invariants = path`: a check run on every resumed snapshot
/// - `typestate`: also generate the typestate view, `mod typed`
/// - `no_diagram`: the machine's rustdoc without the diagram and its script
/// - `export = name`: publish the table for variants to extend
/// - `extends = path`: declare a variant of a published table
/// - `crate = ::path`: how the generated code names agent-fsm, for a crate
///   that renamed the dependency (default `::agent_fsm`)
///
/// Markers in the module: `#[initial]`, `#[terminal]`, `#[transient]`,
/// `#[no_carry]` on states and `#[carry(..)]` on their enum;
/// `#[during_work]` and `#[deadline]` on events; `#[context]` on the
/// context type.
///
/// The full reference, with the grammar of a row and every compile error:
/// [the DSL reference](https://docs.rs/agent-fsm/latest/agent_fsm/docs/dsl/index.html).
#[proc_macro_attribute]
pub fn state_machine(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::attribute(args.into(), item.into()).into()
}

/// Builds a variant from its base's tokens and its own; called by the
/// carrier macro a base with `export = name` defines. Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __merge_variant(input: TokenStream) -> TokenStream {
    variant::merge_named(input.into()).into()
}

/// Stands in for serde's derives when agent-fsm's `serde` feature is off:
/// it accepts the `#[serde(..)]` attributes and adds nothing, so that the
/// one error a machine asking for `serde` gets says to enable the feature.
/// Not for direct use.
#[doc(hidden)]
#[proc_macro_derive(__WithoutSerde, attributes(serde))]
pub fn __without_serde(_item: TokenStream) -> TokenStream {
    TokenStream::new()
}
