//! The `#[state_machine]` attribute macro of agent-fsm.
//!
//! Depend on `agent-fsm`, which re-exports this macro, documents the DSL and
//! provides the runtime the generated code names. This crate only turns
//! tokens into tokens: `parse` (syntax) -> `model` (names resolved) ->
//! `validate` (rules over the whole table) -> `codegen`.

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
/// and a `transitions! { ... }` table into a state machine. The DSL is
/// documented in the `agent-fsm` crate.
#[proc_macro_attribute]
pub fn state_machine(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::state_machine(args.into(), item.into()).into()
}

/// Builds a variant from its base's tokens and its own; called by the
/// carrier macro a base with `export = name` defines. Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __merge_variant(input: TokenStream) -> TokenStream {
    variant::merge(input.into()).into()
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
