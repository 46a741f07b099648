//! The carrier a base table with `export = name` defines: a
//! `macro_rules!` macro holding the base's tokens, which a variant
//! (`extends = path`) calls to be merged with them.

use proc_macro2::{Group, Punct, Spacing, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::Ident;

/// The carrier a base with `export = name` defines: one exported copy for
/// other crates, one path-addressable copy for its own crate (a
/// macro-expanded `#[macro_export]` macro cannot be named by path there).
pub(crate) fn carrier(name: &Ident, args: &TokenStream, item: &TokenStream) -> TokenStream {
    let local = format_ident!("__agent_fsm_carrier_{}", name);
    let (args, item) = (dollar_crate(args.clone()), dollar_crate(item.clone()));
    // The variant's call says how its crate names agent-fsm (see
    // `variant::call_base`): the base's own name for it may not exist there.
    let body = quote! {
        (@agent_fsm_path($($path:tt)*) $($variant:tt)*) => {
            $($path)*::__private::merge_variant! { [#args] [#item] $($variant)* }
        };
    };
    quote! {
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #name { #body }

        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #local { #body }

        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #local as #name;
    }
}

/// `crate::x` in the base's tokens becomes `$crate::x`, so that a path
/// the base wrote from its own crate's root still leads there when a
/// variant in another crate is expanded from the carrier.
fn dollar_crate(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match tt {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), dollar_crate(g.stream()));
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            TokenTree::Ident(i)
                if i == "crate" && matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ':') =>
            {
                let mut dollar = Punct::new('$', Spacing::Alone);
                dollar.set_span(i.span());
                out.push(TokenTree::Punct(dollar));
                out.push(TokenTree::Ident(i));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}
