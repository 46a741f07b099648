//! The `#[state_machine]` attribute macro. Depend on `agent-fsm`, which
//! re-exports it and documents it.
use proc_macro::TokenStream;

/// See the `agent-fsm` crate.
#[proc_macro_attribute]
pub fn state_machine(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
